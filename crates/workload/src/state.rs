//! What a generator keeps in memory for its devices, known from its settings before any
//! source is made, so that a data set whose state cannot fit is refused when the scenario
//! is validated instead of aborting on a failed allocation when the workers start.
//!
//! Every generator holds a fixed-size state per device (its random stream and current
//! values) in the source of the one worker that owns the device, so the state of a run is
//! the devices it generates times the bytes per device: no worker duplicates another's,
//! and what else a source holds (a cursor, a batch) does not grow with the devices.

use crate::WorkloadError;

/// The generator state of a data set, estimated from its settings alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StateEstimate {
    /// The setting that makes the devices: `scale` or `childtable_count`.
    pub key: &'static str,
    /// What a device is, plural: `hosts`, `trucks`, `child tables`.
    pub noun: &'static str,
    /// The number of devices: the setting's value.
    pub devices: u32,
    /// Bytes of state per device.
    pub bytes_per_device: u64,
}

impl StateEstimate {
    /// The state of all the devices.
    pub fn bytes(&self) -> u64 {
        self.bytes_for(self.devices)
    }

    /// The state of `devices` of them (a shard's part).
    pub fn bytes_for(&self, devices: u32) -> u64 {
        u64::from(devices).saturating_mul(self.bytes_per_device)
    }

    /// Refuses a state of `devices` devices larger than `limit` bytes. `limit_source` says
    /// where the limit comes from (e.g. "half of MemAvailable, 62.5 GiB, in
    /// /proc/meminfo"); `part` describes `devices` when they are not all of them (e.g.
    /// "shard 0/4's 1073741824").
    pub fn check(
        &self,
        devices: u32,
        part: Option<&str>,
        limit: u64,
        limit_source: &str,
    ) -> Result<(), WorkloadError> {
        let need = self.bytes_for(devices);
        if need <= limit {
            return Ok(());
        }
        let what = match part {
            Some(part) => format!("{} {}: {part}", self.devices, self.noun),
            None => format!("{} {}", self.devices, self.noun),
        };
        Err(WorkloadError::new(
            self.key,
            format!(
                "{what} need about {} of generator state ({} bytes each), more than the {} \
                 this machine can give it ({limit_source}); lower it, or split the run over \
                 several machines with --shard I/N (each holds only its shard's devices)",
                human_bytes(need),
                self.bytes_per_device,
                human_bytes(limit),
            ),
        ))
    }
}

/// A byte count for people, in binary units with one decimal: `96.0 GiB`.
pub fn human_bytes(bytes: u64) -> String {
    const UNITS: [&str; 6] = ["bytes", "KiB", "MiB", "GiB", "TiB", "PiB"];
    if bytes < 1024 {
        return format!("{bytes} bytes");
    }
    let mut v = bytes as f64;
    let mut unit = 0;
    while v >= 1024.0 && unit < UNITS.len() - 1 {
        v /= 1024.0;
        unit += 1;
    }
    format!("{v:.1} {}", UNITS[unit])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn estimate() -> StateEstimate {
        StateEstimate {
            key: "scale",
            noun: "hosts",
            devices: u32::MAX,
            bytes_per_device: 24,
        }
    }

    #[test]
    fn sizes_read_in_binary_units() {
        assert_eq!(human_bytes(0), "0 bytes");
        assert_eq!(human_bytes(1023), "1023 bytes");
        assert_eq!(human_bytes(1024), "1.0 KiB");
        assert_eq!(human_bytes(3 << 29), "1.5 GiB");
        assert_eq!(human_bytes(u64::from(u32::MAX) * 24), "96.0 GiB");
        assert_eq!(human_bytes(u64::MAX), "16384.0 PiB");
    }

    #[test]
    fn the_check_names_the_key_the_value_the_estimate_and_the_limit() {
        let e = estimate();
        assert_eq!(e.bytes(), 103_079_215_080);
        assert!(e.check(u32::MAX, None, e.bytes(), "x").is_ok());
        let err = e
            .check(u32::MAX, None, 8 << 30, "half of MemAvailable")
            .unwrap_err();
        assert_eq!(err.key, "scale");
        assert_eq!(
            err.message,
            "4294967295 hosts need about 96.0 GiB of generator state (24 bytes each), more \
             than the 8.0 GiB this machine can give it (half of MemAvailable); lower it, or \
             split the run over several machines with --shard I/N (each holds only its \
             shard's devices)"
        );
        let err = e
            .check(1 << 30, Some("shard 0/4's 1073741824"), 1 << 30, "y")
            .unwrap_err();
        assert!(
            err.message
                .starts_with("4294967295 hosts: shard 0/4's 1073741824 need about 24.0 GiB"),
            "{}",
            err.message
        );
        // A quarter of the hosts fit where all do not.
        assert!(e.check(1 << 28, Some("a part"), 8 << 30, "z").is_ok());
    }
}
