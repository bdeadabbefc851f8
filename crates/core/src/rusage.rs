//! Client resource usage from getrusage(2): CPU seconds and peak resident memory of this
//! process, so reports can state what the load generator itself cost.

use std::time::Duration;

/// A snapshot of this process's resource usage.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Usage {
    pub user: Duration,
    pub system: Duration,
    /// Peak resident set size so far, in bytes.
    pub peak_rss_bytes: u64,
}

impl Usage {
    /// Reads the current usage of the whole process (all threads).
    pub fn now() -> Usage {
        let Some(ru) = getrusage_self() else {
            return Usage::default();
        };
        Usage {
            user: timeval(ru.ru_utime),
            system: timeval(ru.ru_stime),
            // Linux reports ru_maxrss in kilobytes.
            peak_rss_bytes: (ru.ru_maxrss.max(0) as u64) * 1024,
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
}
