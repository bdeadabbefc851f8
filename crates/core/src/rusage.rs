//! Client resource usage: CPU seconds from getrusage(2) and the peak resident memory of
//! this process (see [`Usage::peak_rss_bytes`]), so reports can state what the load
//! generator itself cost.

use std::time::Duration;

/// A snapshot of this process's resource usage.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Usage {
    pub user: Duration,
    pub system: Duration,
    /// Peak resident set size so far, in bytes: `VmHWM` from `/proc/self/status` (Linux),
    /// which belongs to this program's memory alone. Where /proc is missing (or has no
    /// `VmHWM`), getrusage's `ru_maxrss`, which on Linux keeps the high-water mark across
    /// `exec`: under `cargo run` it reported cargo's 218 MiB for a 30 MiB tsload.
    pub peak_rss_bytes: u64,
}

impl Usage {
    /// Reads the current usage of the whole process (all threads).
    pub fn now() -> Usage {
        let ru = getrusage_self();
        let peak_rss_bytes = std::fs::read_to_string("/proc/self/status")
            .ok()
            .and_then(|status| vm_hwm_bytes(&status))
            // Linux and the BSDs report ru_maxrss in kilobytes (macOS in bytes, but
            // tsload's client figures are measured on Linux).
            .or_else(|| ru.map(|ru| (ru.ru_maxrss.max(0) as u64) * 1024))
            .unwrap_or(0);
        let Some(ru) = ru else {
            return Usage {
                peak_rss_bytes,
                ..Usage::default()
            };
        };
        Usage {
            user: timeval(ru.ru_utime),
            system: timeval(ru.ru_stime),
            peak_rss_bytes,
        }
    }

    pub fn cpu(&self) -> Duration {
        self.user + self.system
    }

    /// CPU used since `earlier` (peak RSS stays the later, absolute figure).
    pub fn since(&self, earlier: &Usage) -> Usage {
        Usage {
            user: self.user.saturating_sub(earlier.user),
            system: self.system.saturating_sub(earlier.system),
            peak_rss_bytes: self.peak_rss_bytes,
        }
    }
}

/// The `VmHWM:` line of a `/proc/PID/status` text (`VmHWM:    30712 kB`), in bytes.
fn vm_hwm_bytes(status: &str) -> Option<u64> {
    let line = status.lines().find_map(|l| l.strip_prefix("VmHWM:"))?;
    let mut parts = line.split_whitespace();
    let kib: u64 = parts.next()?.parse().ok()?;
    // The kernel writes every Vm* figure in kB (KiB); anything else is not that file.
    (parts.next() == Some("kB")).then(|| kib.saturating_mul(1024))
}

fn timeval(tv: libc::timeval) -> Duration {
    Duration::from_secs(tv.tv_sec.max(0) as u64) + Duration::from_micros(tv.tv_usec.max(0) as u64)
}

#[allow(unsafe_code)]
fn getrusage_self() -> Option<libc::rusage> {
    // SAFETY: rusage is plain integers, for which all-zero is a valid value, and getrusage
    // only writes into the struct it is given.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    let rc = unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    (rc == 0).then_some(ru)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usage_grows_with_work() {
        let a = Usage::now();
        let mut x = 0u64;
        for i in 0..20_000_000u64 {
            x = x.wrapping_mul(31).wrapping_add(i);
        }
        std::hint::black_box(x);
        let b = Usage::now();
        assert!(b.cpu() > a.cpu(), "{a:?} -> {b:?}");
        assert!(b.peak_rss_bytes > 0);
    }

    #[test]
    fn peak_rss_is_read_from_vm_hwm() {
        let status = "Name:\ttsload\nUmask:\t0022\nState:\tS (sleeping)\nVmPeak:\t  712300 kB\n\
                      VmSize:\t  650112 kB\nVmLck:\t       0 kB\nVmHWM:\t   30712 kB\n\
                      VmRSS:\t   29980 kB\nThreads:\t5\n";
        assert_eq!(vm_hwm_bytes(status), Some(30712 * 1024));
        assert_eq!(vm_hwm_bytes("VmRSS:\t 1 kB\n"), None, "no VmHWM line");
        assert_eq!(vm_hwm_bytes("VmHWM:\t lots kB\n"), None);
        assert_eq!(vm_hwm_bytes("VmHWM:\t 5 GiB\n"), None, "unknown unit");
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn peak_rss_on_linux_is_this_process_vm_hwm() {
        let status = std::fs::read_to_string("/proc/self/status").unwrap();
        let hwm = vm_hwm_bytes(&status).unwrap();
        let now = Usage::now().peak_rss_bytes;
        // Read a moment apart: the peak can only have grown, and not by much.
        assert!(now >= hwm && now < hwm + (64 << 20), "{hwm} then {now}");
    }
}
