//! Client resource usage: CPU seconds from getrusage(2) and the peak resident memory of
//! this process (see [`Usage::peak_rss_bytes`]), so reports can state what the load
//! generator itself cost.
//!
//! The total (`user + system`) is exact: Linux reports the scheduler's own run time of
//! every thread (`sum_exec_runtime`, nanoseconds, the figure `CLOCK_PROCESS_CPUTIME_ID`
//! reads; the tests hold it to the thread clock), up to the last tick or switch of any
//! other thread running at that instant (the CLI samples while its workers are idle).
//! The split between user and system is not: on kernels with tick-based CPU accounting
//! (`CONFIG_TICK_CPU_ACCOUNTING`, the usual build; no `nohz_full`) the kernel only
//! notes, at each timer tick (100 to 1,000 a second), which mode the running thread was
//! in, and divides the exact total in that proportion, never letting either part go
//! backwards. Over a run of a few ticks the split is noise: the same 15 ms of generator
//! code into the null target read user 14.7 ms and system 0.06 ms one time, 10.9 and
//! 3.7 ms the next, and 2 s open-loop runs read `user 0.000` (all of it system).
//! [`Usage::split_is_rough`] says when a difference of two samples is that short.

use std::time::Duration;

/// The least CPU time over which the kernel's user/system split is worth reading: one
/// second is 100 to 1,000 tick samples (`CONFIG_HZ`), a split good to a few percent.
/// Below it reports mark the split rough; the total is exact at any length.
pub const SPLIT_MIN_CPU: Duration = Duration::from_secs(1);

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

    /// User plus system time: exact (see the module's documentation).
    pub fn cpu(&self) -> Duration {
        self.user + self.system
    }

    /// Whether the kernel's user/system split of this usage (a difference of two samples,
    /// see [`Usage::since`]) rests on too few timer ticks to mean much: under
    /// [`SPLIT_MIN_CPU`] of CPU. [`Usage::cpu`] is exact either way.
    pub fn split_is_rough(&self) -> bool {
        self.cpu() < SPLIT_MIN_CPU
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

    /// This thread's CPU time, exact (CLOCK_THREAD_CPUTIME_ID).
    #[allow(unsafe_code)]
    fn thread_cpu() -> Duration {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: clock_gettime writes one timespec into the one it is given.
        let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
        assert_eq!(rc, 0);
        Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn cpu_total_is_exact_not_tick_sampled() {
        // 20 busy loops of 12 ms of this thread's CPU (3 ticks at 250 Hz, just over one at
        // 100 Hz): a total counted in ticks would miss by a tick or more in some of them.
        // The process's total also holds the other test threads' CPU, so it may only be
        // larger; it is never smaller than this thread's by more than its rounding (two
        // microsecond truncations).
        for round in 0..20 {
            let (u0, t0) = (Usage::now(), thread_cpu());
            let mut x = 0u64;
            while thread_cpu() - t0 < Duration::from_millis(12) {
                for i in 0..1000u64 {
                    x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(i));
                }
            }
            // The thread clock's window lies inside the process's: read last at the start,
            // first at the end.
            let t1 = thread_cpu();
            let u1 = Usage::now();
            let (process, thread) = (u1.since(&u0).cpu(), t1 - t0);
            assert!(
                process + Duration::from_micros(2) >= thread,
                "round {round}: getrusage total {process:?} < thread clock {thread:?}"
            );
        }
    }

    #[test]
    fn the_split_is_rough_under_a_second_of_cpu() {
        let usage = |user_ms, system_ms| Usage {
            user: Duration::from_millis(user_ms),
            system: Duration::from_millis(system_ms),
            peak_rss_bytes: 0,
        };
        // What the 2 s open-loop run into null read: 11 ms, all of it "system".
        assert!(usage(0, 11).split_is_rough());
        assert!(usage(700, 299).split_is_rough());
        assert!(!usage(700, 300).split_is_rough());
        assert!(!usage(5_000, 0).split_is_rough());
        // A difference of two samples is judged on its own length.
        let (early, late) = (usage(40_000, 9_000), usage(40_010, 9_001));
        assert!(late.since(&early).split_is_rough());
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
